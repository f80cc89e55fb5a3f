/* SHA-256 through OpenSSL's libcrypto (EVP), for content-addressed keys. */
#include <stdlib.h>
#include "kopt/core.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

/* kopt_hash is an EVP_MD_CTX behind an opaque name. */
kopt_hash *kopt_hash_new(void)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();

    if (!md)
        return NULL;
    if (EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(md);
        return NULL;
    }
    return (kopt_hash *)md;
}

void kopt_hash_add(kopt_hash *h, const void *data, size_t len)
{
    if (h && len)
        EVP_DigestUpdate((EVP_MD_CTX *)h, data, len);
}

void kopt_hash_add_str(kopt_hash *h, const char *s)
{
    static const char sep = '\x1f';

    kopt_hash_add(h, s ? s : "", s ? strlen(s) : 0);
    kopt_hash_add(h, &sep, 1);
}

void kopt_hash_hex(kopt_hash *h, char out[65])
{
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int n = 0, i;

    out[0] = '\0';
    if (!h)
        return;
    EVP_DigestFinal_ex((EVP_MD_CTX *)h, d, &n);
    for (i = 0; i < n && i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
    EVP_MD_CTX_free((EVP_MD_CTX *)h);
}

void kopt_sha256_hex(const void *data, size_t len, char out[65])
{
    kopt_hash *h = kopt_hash_new();

    kopt_hash_add(h, data, len);
    kopt_hash_hex(h, out);
}

kopt_status kopt_file_sha256(kopt_ctx *ctx, const char *path, char out[65])
{
    char *data = NULL;
    size_t len = 0;
    kopt_status rc = kopt_file_read(ctx, path, &data, &len);

    if (rc == KOPT_OK)
        kopt_sha256_hex(data, len, out);
    free(data);
    return rc;
}
