/*
** error.h: the error codes every tally module returns.
**
** As in SQLite and libuv, a function that can fail returns an int: TLY_OK (0)
** on success or one of the negative codes below. Where a person needs more
** than a code (a file, a line, a field), the module records a diagnostic in a
** tly_diags list (diag.h); the code alone is for control flow.
*/
#ifndef TALLY_ERROR_H
#define TALLY_ERROR_H

enum {
    TLY_OK = 0,
    TLY_ENOMEM = -1,   /* an allocation failed */
    TLY_EINVAL = -2,   /* the input is malformed (bad syntax, bad value) */
    TLY_ERANGE = -3,   /* the value is well formed but outside what tally represents */
    TLY_EIO = -4,      /* a file could not be opened or read */
    TLY_ENOENT = -5,   /* a named thing does not exist */
    TLY_ELIMIT = -6,   /* a documented input limit (size, depth, count) was exceeded */
    TLY_ENET = -7,     /* a server could not be reached or the connection broke */
    TLY_EAUTH = -8,    /* the server refused the credentials (401) or the request (403) */
    TLY_ETIMEOUT = -9, /* nothing arrived for too long */
    TLY_EGONE = -10,   /* 410 Gone: a resourceVersion or continue token expired */
    TLY_EHTTP = -11    /* the server answered with another error status */
};

/* A short English description of an error code ("out of range", ...). */
const char *tly_strerror(int code);

#endif
