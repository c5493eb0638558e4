/*
 * Bundle files (accel-kc, accel_module_load_bundle; docs/KERNELS.md, "Bundles: accel-kc"): a
 * module source and its prebuilt forms in one versioned, little-endian file. Read by the core
 * (core/module.c), written by tools/accel_kc.c.
 *
 *   header (64 bytes): magic "ACCBUNDL" | u32 version (1) | u32 header size (64) |
 *     u32 section count | u32 section entry size (64) | u64 file size |
 *     u64 checksum (of the header's other bytes and the section table) |
 *     char accel_version[24] (the writer's, NUL-padded)
 *   section table: one 64-byte entry per section: u32 kind | u32 flags (0) | u64 offset |
 *     u64 size | u64 checksum of the payload | char target[32] (NUL-terminated)
 *   payloads, each inside the file after the table.
 * Kinds: ACCEL_BUNDLE_SOURCE (the module source, exactly once: the core reads its rows as
 * accel_module_load_source does), ACCEL_BUNDLE_OPTIONS (at most once), and the forms
 * (ACCEL_MODULE_FORM_* of accel_plugin.h); other kinds are checked and skipped. Checksums are
 * 64-bit FNV-1a.
 */
#ifndef ACCEL_COMMON_MODULE_BUNDLE_H
#define ACCEL_COMMON_MODULE_BUNDLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "accel/accel_plugin.h"

#define ACCEL_BUNDLE_VERSION 1u
#define ACCEL_BUNDLE_HEADER_SIZE 64u
#define ACCEL_BUNDLE_ENTRY_SIZE 64u
#define ACCEL_BUNDLE_TARGET_MAX 32u
#define ACCEL_BUNDLE_MAX_SECTIONS 64u
#define ACCEL_BUNDLE_SOURCE 0x100u
#define ACCEL_BUNDLE_OPTIONS 0x101u

/* The CPU target a shared object form is for (what this build's CPU backend loads). */
#if defined(__x86_64__)
#define ACCEL_BUNDLE_CPU_ARCH "x86_64"
#elif defined(__aarch64__)
#define ACCEL_BUNDLE_CPU_ARCH "aarch64"
#elif defined(__powerpc64__)
#define ACCEL_BUNDLE_CPU_ARCH "ppc64"
#else
#define ACCEL_BUNDLE_CPU_ARCH "unknown"
#endif
#if defined(__linux__)
#define ACCEL_BUNDLE_CPU_TARGET ACCEL_BUNDLE_CPU_ARCH "-linux"
#else
#define ACCEL_BUNDLE_CPU_TARGET ACCEL_BUNDLE_CPU_ARCH "-unknown"
#endif

/* One section: kind, target and payload (pointing into the file's bytes). */
typedef struct accel_bundle_section {
  uint32_t kind;
  char target[ACCEL_BUNDLE_TARGET_MAX];
  const unsigned char *data;
  size_t size;
} accel_bundle_section_t;

/* A read bundle: sections point into the bytes given to accel_bundle_read. */
typedef struct accel_bundle {
  uint32_t nsections;
  accel_bundle_section_t sections[ACCEL_BUNDLE_MAX_SECTIONS];
  const accel_bundle_section_t *source, *options; /* options: NULL when absent */
} accel_bundle_t;

uint64_t accel_bundle_checksum(uint64_t h, const void *data, size_t n);

/* Checks every field, offset and checksum of the size bytes at data. 0: *out holds the
 * sections; -1: why (a sentence) says what is wrong. */
int accel_bundle_read(const void *data, size_t size, accel_bundle_t *out, char *why,
                      size_t whylen);

/* The name of form kind (ACCEL_MODULE_FORM_*; "unknown" for others). */
const char *accel_bundle_form_name(uint32_t kind);

/* "kind target, kind target, ..." of n forms into buf ("none" when n is 0). */
void accel_bundle_list_forms(const accel_module_form_t *forms, uint32_t n, char *buf,
                             size_t len);

/* The form of kind for target among n (target NULL: any), or NULL. */
const accel_module_form_t *accel_bundle_find_form(const accel_module_form_t *forms, uint32_t n,
                                                  uint32_t kind, const char *target);

/* The number of a module_build's bundle forms (0: a build from source, or a build struct too
 * old to have them). */
uint32_t accel_bundle_nforms(const accel_module_build_t *b);

/* The UNSUPPORTED message for backend in buf: b's bundle has no form of kind for target (NULL:
 * for any target; else a description such as "sm_86 or below"), naming the bundle's forms. */
void accel_bundle_no_form(const accel_module_build_t *b, uint32_t kind, const char *target,
                          const char *backend, char *buf, size_t len);

/* A module_build from a bundle that has no form of kind for target (target NULL: any)? Then 1,
 * with accel_bundle_no_form's message in buf; 0 for a build from source or a bundle with such a
 * form. */
int accel_bundle_lacks_form(const accel_module_build_t *b, uint32_t kind, const char *target,
                            const char *backend, char *buf, size_t len);

/* The PTX form to load on a device of arch (the compute capability as major * 10 + minor): the
 * one whose target "sm_XY" is the newest arch not above it (the driver JIT-compiles PTX for a
 * newer device), or NULL. Targets that are not "sm_" and 1 to 4 digits are ignored. */
const accel_module_form_t *accel_bundle_ptx_form(const accel_module_form_t *forms, uint32_t n,
                                                 int arch);

/* Writes n sections as a bundle to f (version: the writer's accel version). 0: written. */
int accel_bundle_write(FILE *f, const accel_bundle_section_t *sections, uint32_t n,
                       const char *version);

#endif
