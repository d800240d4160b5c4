/*
** version.h: tally's version, printed by `tally --version` and sent as the
** API client's User-Agent (tally/<version>).
*/
#ifndef TALLY_VERSION_H
#define TALLY_VERSION_H

#ifndef TALLY_VERSION
#define TALLY_VERSION "0.1.0"
#endif

#endif
