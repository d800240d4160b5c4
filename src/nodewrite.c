/*
** nodewrite.c: a value tree written back as compact JSON (nodewrite.h).
*/
#include "tally/nodewrite.h"

#include <stdbool.h>

#include "tally/json.h"

/* RFC 8259's number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool json_number(const char *s)
{
    if (*s == '-')
        s++;
    if (*s == '0')
        s++;
    else if (*s >= '1' && *s <= '9')
        while (*s >= '0' && *s <= '9')
            s++;
    else
        return false;
    if (*s == '.') {
        s++;
        if (*s < '0' || *s > '9')
            return false;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (*s < '0' || *s > '9')
            return false;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return *s == '\0';
}

void tly_node_write_json(FILE *out, const tly_node *n)
{
    switch (n->type) {
    case TLY_N_NULL:
        fputs("null", out);
        break;
    case TLY_N_BOOL:
        fputs(n->bval ? "true" : "false", out);
        break;
    case TLY_N_INT:
    case TLY_N_FLOAT:
        /* The text as read; a YAML-only form (+1, .5, .inf) becomes a string
           rather than invalid JSON. */
        if (json_number(n->str))
            fputs(n->str, out);
        else
            tly_json_write_escaped(out, n->str);
        break;
    case TLY_N_STRING:
        tly_json_write_escaped(out, n->str);
        break;
    case TLY_N_MAP:
        fputc('{', out);
        for (const tly_node *k = n->kids; k; k = k->next) {
            tly_json_write_escaped(out, k->key);
            fputc(':', out);
            tly_node_write_json(out, k);
            if (k->next)
                fputc(',', out);
        }
        fputc('}', out);
        break;
    case TLY_N_SEQ:
        fputc('[', out);
        for (const tly_node *k = n->kids; k; k = k->next) {
            tly_node_write_json(out, k);
            if (k->next)
                fputc(',', out);
        }
        fputc(']', out);
        break;
    }
}
