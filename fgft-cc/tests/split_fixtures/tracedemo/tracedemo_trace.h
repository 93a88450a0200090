/* SPDX-License-Identifier: GPL-2.0 */
/* The tracepoints of the tracedemo fixture. */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM tracedemo

#if !defined(_TRACEDEMO_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TRACEDEMO_TRACE_H

#include <linux/tracepoint.h>

TRACE_EVENT(tracedemo_stats,
	TP_PROTO(unsigned int queues, u64 packets),
	TP_ARGS(queues, packets),
	TP_STRUCT__entry(
		__field(unsigned int, queues)
		__field(u64, packets)
	),
	TP_fast_assign(
		__entry->queues = queues;
		__entry->packets = packets;
	),
	TP_printk("queues=%u packets=%llu", __entry->queues,
		  (unsigned long long)__entry->packets)
);

DECLARE_EVENT_CLASS(tracedemo_level,
	TP_PROTO(u32 level),
	TP_ARGS(level),
	TP_STRUCT__entry(
		__field(u32, level)
	),
	TP_fast_assign(
		__entry->level = level;
	),
	TP_printk("level=%#x", __entry->level)
);

DEFINE_EVENT(tracedemo_level, tracedemo_set_level,
	TP_PROTO(u32 level),
	TP_ARGS(level)
);

#endif /* _TRACEDEMO_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE tracedemo_trace
#include <trace/define_trace.h>
