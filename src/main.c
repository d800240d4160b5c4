/*
** main.c: the tally binary's entry point. It only dispatches to the
** subcommands in src/cmd/; every subcommand parses its own flags.
*/
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "tally/version.h"

struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

static const struct subcommand subcommands[] = {
    {"simulate", tly_cmd_simulate, "load a cluster and run the scheduling engine over it"},
    {"validate", tly_cmd_validate, "check objects as the API server and the webhook would"},
    {"explain", tly_cmd_explain, "explain one decision of simulate: a pod, a Run or a queue"},
    {"admit", tly_cmd_admit, "decide one AdmissionReview (stdin) against a state"},
    {"serve", tly_cmd_serve, "serve admission decisions over HTTPS (the webhook)"},
    {"snapshot", tly_cmd_snapshot, "write every object tally reads from the API server to one file"},
    {"quantity", tly_cmd_quantity, "parse and print Kubernetes quantities"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: tally <command> [options] [PATH...]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        fprintf(out, "  %-10s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(out, "\nRun 'tally <command> --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("tally %s\n", TALLY_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        if (!strcmp(argv[1], subcommands[i].name))
            return subcommands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "tally: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
