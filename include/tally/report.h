/*
** report.h: the HTML report of `tally simulate -o html` (contract section 3,
** docs/report.md).
**
** One self-contained HTML5 page: inline CSS, no scripts, no external
** resources (fonts, images, links off the page). It shows, after the engines
** have run:
**   - a header: the title, the clock, counts of pods, queues, Runs and
**     Runtime Pods;
**   - the queue tree (indented by depth) with a bar of used vs limit for
**     spec.resources cpu, memory and gpu and for every AccountedResource with
**     a finite limit; at or over 90% is flagged (class "hi"), over 100%
**     differently (class "over");
**   - the GPU products (node label nvidia.com/gpu.product) the Running and
**     Bound pods of each queue's subtree sit on, with pod counts;
**   - the pods tally did not place (Gated, Unschedulable, Invalid) grouped by
**     state and reason, each with its message and its explain text
**     (tly_podsched_explain) in a <details> element;
**   - Runtime Pod utilisation per resource as a heat map, and the Runs that
**     wait or failed, grouped the same way, with tly_runsched_explain text.
** Every piece of input text is HTML-escaped. The output depends only on the
** inputs: the same store and engine results give the same bytes.
*/
#ifndef TALLY_REPORT_H
#define TALLY_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tally/podsched.h"
#include "tally/runsched.h"
#include "tally/store.h"

/*
** Writes the page to out. ps and rs must have run. title is shown in the
** <title> and the header (escaped; NULL means "tally report"). The clock shown
** is the input's clock (tly_store_newest_time).
*/
void tly_report_html(FILE *out, tly_store *s, tly_podsched *ps, tly_runsched *rs,
                     const char *title);

/*
** The same with the clock the engines ran at (`simulate --now`): now in Unix
** seconds; have_clock false shows that the input held no time.
*/
void tly_report_html_at(FILE *out, tly_store *s, tly_podsched *ps, tly_runsched *rs,
                        const char *title, int64_t now, bool have_clock);

/* Writes s with & < > " ' as character references; other control bytes but \n and \t dropped. */
void tly_html_escape(FILE *out, const char *s);

#endif
