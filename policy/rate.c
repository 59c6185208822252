/* Rates of use: how often a heat record (heat.c, spans.c) was used, read
 * from its decayed use count and its age. A leaf: heat.c writes the
 * records, spans.c and spill read them through these, and neither needs
 * the other for it. */
#include "policy/internal.h"

/* uses as of now: halved once per half-life boundary crossed since then.
 * A stamp ahead of now is a use another thread made after the caller read
 * the clock: as recent as now (the difference would wrap to 2^64 and read
 * the owner just used as never used). */
uint32_t sw_heat_decayed(uint32_t uses, uint64_t then, uint64_t now)
{
    if (then >= now)
        return uses;
    uint64_t k = (now >> SW_HALF_LIFE_LOG) - (then >> SW_HALF_LIFE_LOG);
    return k >= 32 ? 0 : uses >> k;
}

uint32_t sw_heat_uses(const sw_heat *h, uint64_t now)
{
    return sw_heat_decayed(atomic_load_explicit(&h->uses, memory_order_relaxed),
                   atomic_load_explicit(&h->touched, memory_order_relaxed), now);
}

uint32_t sw_heat_rate(const sw_heat *h, uint64_t now)
{
    uint64_t born = atomic_load_explicit(&h->born, memory_order_relaxed);
    uint64_t age = now > born ? now - born : 0;
    if (age < SW_NEWBORN_TICKS)
        return SW_RATE_NEWBORN;
    /* About the decay's mean life (half-life / ln 2): older owners count
     * their decayed uses over that window. */
    uint64_t window = (3ull << SW_HALF_LIFE_LOG) / 2;
    uint64_t r = ((uint64_t)sw_heat_uses(h, now) << 10) / (age < window ? age : window);
    return r >= SW_RATE_NEWBORN ? SW_RATE_NEWBORN - 1 : (uint32_t)r;
}
