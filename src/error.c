/*
** error.c: the English text of tally's error codes (error.h).
**
** The texts are short and lower-case so that callers can embed them in their
** own messages ("cannot read x.yaml: no such file or object").
*/
#include "tally/error.h"

const char *tly_strerror(int code)
{
    switch (code) {
    case TLY_OK:
        return "success";
    case TLY_ENOMEM:
        return "out of memory";
    case TLY_EINVAL:
        return "invalid input";
    case TLY_ERANGE:
        return "out of range";
    case TLY_EIO:
        return "input/output error";
    case TLY_ENOENT:
        return "no such file or object";
    case TLY_ELIMIT:
        return "input limit exceeded";
    case TLY_ENET:
        return "network error";
    case TLY_EAUTH:
        return "not authorized";
    case TLY_ETIMEOUT:
        return "timed out";
    case TLY_EGONE:
        return "expired (410 Gone)";
    case TLY_EHTTP:
        return "HTTP error";
    default:
        return "unknown error";
    }
}
