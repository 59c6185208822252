/* diffgen's random numbers: xoshiro256** seeded by splitmix64 from (seed,
 * thread index), so that every thread draws the same sequence in every run
 * whatever the interleaving, and the driver-alone run and the run under
 * spillway plan the same operations. */
#ifndef DIFF_RNG_H
#define DIFF_RNG_H
#include <math.h>
#include <stdint.h>

struct diff_rng {
    uint64_t s[4];
};

static inline uint64_t diff_splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline void diff_rng_seed(struct diff_rng *r, uint64_t seed, unsigned thread)
{
    uint64_t x = seed ^ ((uint64_t)thread * 0xd1342543de82ef95ULL + 0x2545f4914f6cdd1dULL);
    for (int i = 0; i < 4; i++)
        r->s[i] = diff_splitmix(&x);
}

static inline uint64_t diff_rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static inline uint64_t diff_next(struct diff_rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = diff_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = diff_rotl(s[3], 45);
    return out;
}

/* Uniform in [0, 1). */
static inline double diff_unit(struct diff_rng *r)
{
    return (double)(diff_next(r) >> 11) * 0x1.0p-53;
}

/* Uniform in [lo, hi]; the modulo bias is irrelevant at these ranges. */
static inline uint64_t diff_range(struct diff_rng *r, uint64_t lo, uint64_t hi)
{
    return hi <= lo ? lo : lo + diff_next(r) % (hi - lo + 1);
}

/* Log-uniform in [lo, hi]: every octave is as likely as every other. */
static inline uint64_t diff_log_range(struct diff_rng *r, uint64_t lo, uint64_t hi)
{
    if (hi <= lo)
        return lo;
    double v = exp(log((double)lo) + diff_unit(r) * (log((double)hi + 1) - log((double)lo)));
    uint64_t x = (uint64_t)v;
    return x < lo ? lo : x > hi ? hi : x;
}
#endif
