// SPDX-License-Identifier: GPL-2.0
/* The self-test bodies, instrumented without read checks. */
#define ST_PREFIX st_noreads
#include "st_body.c"
