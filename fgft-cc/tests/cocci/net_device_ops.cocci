// SPDX-License-Identifier: GPL-2.0
// fgft cross-check: functions stored by designated initializers of
// struct net_device_ops.  Prints "file line function field" per match.
@r@
identifier ops, fld, fn;
position p;
@@
struct net_device_ops ops = { ..., .fld = fn@p, ... };

@script:python@
fn << r.fn;
fld << r.fld;
p << r.p;
@@
print("%s %s %s %s" % (p[0].file, p[0].line, fn, fld))
