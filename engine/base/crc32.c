/* CRC-32, slicing-by-8: every .ksm load checks the whole file, so this is on the start-up path. */
#include "crc32.h"

#include "once.h"

static uint32_t g_table[8][256];
static ks__once_flag g_table_once = KS__ONCE_INIT;

static void build_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        g_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            g_table[t][i] = (g_table[t - 1][i] >> 8) ^ g_table[0][g_table[t - 1][i] & 0xff];
}

uint32_t ks__crc32(uint32_t crc, const uint8_t *p, size_t n) {
    ks__once(&g_table_once, build_table);
    crc = ~crc;
    while (n >= 8) {
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                             (uint32_t)p[3] << 24);
        uint32_t hi =
            (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        crc = g_table[7][lo & 0xff] ^ g_table[6][(lo >> 8) & 0xff] ^ g_table[5][(lo >> 16) & 0xff] ^
              g_table[4][lo >> 24] ^ g_table[3][hi & 0xff] ^ g_table[2][(hi >> 8) & 0xff] ^
              g_table[1][(hi >> 16) & 0xff] ^ g_table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = g_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}
