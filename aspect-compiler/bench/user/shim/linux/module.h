/* SPDX-License-Identifier: GPL-2.0 */
/* User-space shim: no modules. */
#ifndef FGFT_SHIM_MODULE_H
#define FGFT_SHIM_MODULE_H
#define THIS_MODULE ((struct module *)0)
#endif
