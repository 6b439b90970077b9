/*
 * iSCSI names (RFC 7143 4.2.7, RFC 3722): the one validator that the
 * configuration, the login and the SCSI layer (TransportIDs, the APTPL
 * state file) share. Pure functions, no state.
 *
 * The forms accepted, after normalisation:
 *   iqn.YYYY-MM.reversed.domain[:anything]   (RFC 7143 4.2.7.4)
 *   eui. + 16 hex digits                     (4.2.7.5)
 *   naa. + 16 or 32 hex digits               (4.2.7.6, RFC 3980)
 * at most 223 bytes, made of a-z, 0-9, '-', '.' and ':' only (the ASCII
 * part of the RFC 3722 stringprep profile; no other character is taken).
 * Normalisation is the profile's case folding restricted to ASCII:
 * iSCSI names are case-insensitive, so two spellings that differ only in
 * case are one name, and everything that compares names compares the
 * normalised forms.
 */
#ifndef COMMON_ISCSI_NAME_H
#define COMMON_ISCSI_NAME_H

#include <stddef.h>

#define ISCSI_NAME_MAX 223      /* RFC 7143 4.2.7.1: bytes, without the NUL */

/* Why name is not a valid iSCSI name in normalised (lower-case) form, or
 * NULL when it is. The reason is a phrase for "NAME: REASON" messages. */
const char *iscsi_name_error(const char *name);

/* Normalise name (ASCII case folding) into out and check the result.
 * Returns NULL when out holds a valid normalised name, else why the name
 * is refused (out then holds nothing useful). */
const char *iscsi_name_normalize(const char *name, char out[ISCSI_NAME_MAX + 1]);

/* A printable copy of a peer-chosen string for a log line: bytes outside
 * 0x20..0x7e and the backslash become \xNN; cut (with "...") to fit out. */
void iscsi_name_printable(const char *in, char *out, size_t outlen);

#endif
