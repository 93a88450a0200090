// SPDX-License-Identifier: GPL-2.0
/* The self-test bodies, not instrumented. */
#define ST_PREFIX st_plain
#include "st_body.c"
