// SPDX-License-Identifier: GPL-2.0
/* The self-test bodies, instrumented like an SFI module. */
#define ST_PREFIX st_sfi
#include "st_body.c"
