/*
** node.c: lookups over the per-object value tree (node.h).
*/
#include "tally/node.h"

#include <string.h>

const tly_node *tly_node_get_hashed(const tly_node *map, const char *key, uint32_t h)
{
    if (!map || map->type != TLY_N_MAP)
        return NULL;
    /* The last occurrence wins if a key repeats (the loader reports it). */
    bool unique = map->flags & TLY_NF_UNIQUE;
    const tly_node *found = NULL;
    for (const tly_node *k = map->kids; k; k = k->next)
        if ((k->khash == h || !k->khash) && k->key && strcmp(k->key, key) == 0) {
            found = k;
            if (unique)
                break;
        }
    return found;
}

const tly_node *tly_node_at(const tly_node *seq, uint32_t i)
{
    if (!seq || seq->type != TLY_N_SEQ || i >= seq->nkids)
        return NULL;
    const tly_node *k = seq->kids;
    while (i-- && k)
        k = k->next;
    return k;
}

const tly_node *tly_node_path(const tly_node *n, const char *dotted)
{
    char key[256];
    const char *p = dotted;
    while (n && *p) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        if (len >= sizeof key)
            return NULL;
        memcpy(key, p, len);
        key[len] = '\0';
        n = tly_node_get(n, key);
        p += len;
        if (*p == '.')
            p++;
    }
    return n;
}

const char *tly_ntype_name(int type)
{
    switch (type) {
    case TLY_N_NULL: return "null";
    case TLY_N_BOOL: return "boolean";
    case TLY_N_INT: return "integer";
    case TLY_N_FLOAT: return "number";
    case TLY_N_STRING: return "string";
    case TLY_N_MAP: return "map";
    case TLY_N_SEQ: return "list";
    default: return "value";
    }
}

bool tly_node_is_scalar(const tly_node *n)
{
    return n && (n->type == TLY_N_INT || n->type == TLY_N_FLOAT || n->type == TLY_N_STRING);
}

tly_node *tly_node_copy(const tly_node *n, tly_arena *a)
{
    if (!n)
        return NULL;
    tly_node *c = tly_arena_alloc(a, sizeof *c);
    *c = *n;
    c->next = NULL;
    c->kids = NULL;
    if (n->key)
        c->key = tly_arena_strdup(a, n->key);
    if (n->str)
        c->str = tly_arena_strndup(a, n->str, n->len);
    tly_node **tail = &c->kids;
    for (const tly_node *k = n->kids; k; k = k->next) {
        *tail = tly_node_copy(k, a);
        tail = &(*tail)->next;
    }
    return c;
}

static bool all_digits(const char *s, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

static bool is_float_text(const char *s, size_t len)
{
    size_t i = 0;
    if (i < len && (s[i] == '+' || s[i] == '-'))
        i++;
    if (len - i == 4 && (!strncmp(s + i, ".inf", 4) || !strncmp(s + i, ".Inf", 4) ||
                         !strncmp(s + i, ".INF", 4)))
        return true;
    size_t digits = 0;
    while (i < len && s[i] >= '0' && s[i] <= '9')
        i++, digits++;
    if (i < len && s[i] == '.') {
        i++;
        while (i < len && s[i] >= '0' && s[i] <= '9')
            i++, digits++;
    }
    if (digits == 0)
        return false;
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < len && (s[i] == '+' || s[i] == '-'))
            i++;
        if (!all_digits(s + i, len - i))
            return false;
        i = len;
    }
    return i == len;
}

tly_ntype tly_plain_scalar_type(const char *s, size_t len, bool *bval)
{
    if (len == 0 || (len == 1 && s[0] == '~') ||
        (len == 4 && (!memcmp(s, "null", 4) || !memcmp(s, "Null", 4) || !memcmp(s, "NULL", 4))))
        return TLY_N_NULL;
    if (len == 4 && (!memcmp(s, "true", 4) || !memcmp(s, "True", 4) || !memcmp(s, "TRUE", 4))) {
        if (bval)
            *bval = true;
        return TLY_N_BOOL;
    }
    if (len == 5 && (!memcmp(s, "false", 5) || !memcmp(s, "False", 5) || !memcmp(s, "FALSE", 5))) {
        if (bval)
            *bval = false;
        return TLY_N_BOOL;
    }
    size_t i = (s[0] == '+' || s[0] == '-') ? 1 : 0;
    if (all_digits(s + i, len - i))
        return TLY_N_INT;
    if ((len == 4 && (!memcmp(s, ".nan", 4) || !memcmp(s, ".NaN", 4) || !memcmp(s, ".NAN", 4))) ||
        is_float_text(s, len))
        return TLY_N_FLOAT;
    return TLY_N_STRING;
}
