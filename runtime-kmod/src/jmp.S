/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The transaction trampoline.
 *
 * fgft_jb_call(jb, fn, arg) saves the callee-saved registers, the stack
 * pointer and the landing point (the instruction right after the call of
 * the body) in *jb, then calls fn(arg).  A fault in the body is brought back
 * to the landing point by the die notifier (core.c), which writes the saved
 * registers into pt_regs; fgft_jb_longjmp() does the same from inside the
 * body without a fault.  Either way execution resumes after the call as if
 * fn had returned, with rsp and the callee-saved registers as they were at
 * the call, so the unwinder and objtool see one ordinary function.
 */
#include <linux/linkage.h>
#include <linux/objtool.h>
#include <asm/nospec-branch.h>
#include <asm/ibt.h>

#define JB_RBX	0
#define JB_RBP	8
#define JB_R12	16
#define JB_R13	24
#define JB_R14	32
#define JB_R15	40
#define JB_RSP	48
#define JB_RIP	56

	.text

/* long fgft_jb_call(struct fgft_jmpbuf *jb, long (*fn)(void *), void *arg) */
SYM_FUNC_START(fgft_jb_call)
	push	%rbx
	mov	%rdi, %rbx
	mov	%rbx, JB_RBX(%rbx)
	mov	%rbp, JB_RBP(%rbx)
	mov	%r12, JB_R12(%rbx)
	mov	%r13, JB_R13(%rbx)
	mov	%r14, JB_R14(%rbx)
	mov	%r15, JB_R15(%rbx)
	mov	%rsp, JB_RSP(%rbx)
	lea	.Lfgft_landing(%rip), %rax
	mov	%rax, JB_RIP(%rbx)
	mov	%rsi, %rax
	mov	%rdx, %rdi
	CALL_NOSPEC rax
.Lfgft_landing:
	/* fgft_jb_longjmp() reaches this point with an indirect jump. */
	ENDBR
	pop	%rbx
	RET
SYM_FUNC_END(fgft_jb_call)

/* void fgft_jb_longjmp(struct fgft_jmpbuf *jb, long ret) */
SYM_FUNC_START(fgft_jb_longjmp)
	mov	%rsi, %rax
	mov	JB_RBP(%rdi), %rbp
	mov	JB_R12(%rdi), %r12
	mov	JB_R13(%rdi), %r13
	mov	JB_R14(%rdi), %r14
	mov	JB_R15(%rdi), %r15
	mov	JB_RBX(%rdi), %rbx
	mov	JB_RIP(%rdi), %rcx
	mov	JB_RSP(%rdi), %rsp
	JMP_NOSPEC rcx
SYM_FUNC_END(fgft_jb_longjmp)
/* It switches stacks on purpose: keep objtool's stack validation off it. */
STACK_FRAME_NON_STANDARD fgft_jb_longjmp
