// SPDX-License-Identifier: GPL-2.0
/* The self-test bodies, instrumented with a runtime call at every check. */
#define ST_PREFIX st_call
#include "st_body.c"
