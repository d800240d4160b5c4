/*
** cmd.h: the subcommands of the tally binary.
**
** Each subcommand lives in src/cmd/<name>.c and has the signature of main():
** argv[0] is the subcommand's own name. It returns the process exit status.
** Subcommands parse their own flags; main.c only dispatches.
*/
#ifndef TALLY_CMD_H
#define TALLY_CMD_H

int tly_cmd_quantity(int argc, char **argv);
int tly_cmd_validate(int argc, char **argv);
int tly_cmd_simulate(int argc, char **argv);
int tly_cmd_admit(int argc, char **argv);
int tly_cmd_serve(int argc, char **argv);
int tly_cmd_explain(int argc, char **argv);
int tly_cmd_snapshot(int argc, char **argv);

#endif
