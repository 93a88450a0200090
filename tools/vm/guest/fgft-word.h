/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every guest program shares: a text value spelled as one field of a
 * marker line (FGFT-MARK ... key=value ...).
 */
#ifndef FGFT_WORD_H
#define FGFT_WORD_H

#include <stddef.h>

/*
 * Copies @s into @out (@len bytes) with blanks and '=' replaced, so that it
 * stays one marker field; an empty value is spelled "-".
 */
static inline const char *word(char *out, size_t len, const char *s)
{
	size_t i;

	for (i = 0; i + 1 < len && s[i]; i++)
		out[i] = (s[i] <= ' ' || s[i] == '=') ? '_' : s[i];
	out[i] = '\0';
	if (!i && len > 1) {
		out[0] = '-';
		out[1] = '\0';
	}
	return out;
}

#endif /* FGFT_WORD_H */
