/*
 * src/tune/strategies.c: the list of search strategies (one per file in strategies/) and
 * lookup by name. The order is the order `kopt tune --list-strategies` shows.
 */
#include "kopt/tune.h"

#include <string.h>

extern const kopt_tune_strategy kopt_tune_strategy_exhaustive;
extern const kopt_tune_strategy kopt_tune_strategy_random;
extern const kopt_tune_strategy kopt_tune_strategy_annealing;
extern const kopt_tune_strategy kopt_tune_strategy_genetic;
extern const kopt_tune_strategy kopt_tune_strategy_diff_evolution;
extern const kopt_tune_strategy kopt_tune_strategy_pso;
extern const kopt_tune_strategy kopt_tune_strategy_greedy_ils;
extern const kopt_tune_strategy kopt_tune_strategy_forest;
extern const kopt_tune_strategy kopt_tune_strategy_profile_guided;

const kopt_tune_strategy *const kopt_tune_strategies[] = {
    &kopt_tune_strategy_exhaustive,
    &kopt_tune_strategy_random,
    &kopt_tune_strategy_annealing,
    &kopt_tune_strategy_genetic,
    &kopt_tune_strategy_diff_evolution,
    &kopt_tune_strategy_pso,
    &kopt_tune_strategy_greedy_ils,
    &kopt_tune_strategy_forest,
    &kopt_tune_strategy_profile_guided,
    NULL,
};

/* Kernel Tuner's names for the same strategies, so its users find them. */
static const char *const aliases[][2] = {
    {"brute_force", "exhaustive"},      {"random_sample", "random"},
    {"simulated_annealing", "annealing"}, {"genetic_algorithm", "genetic"},
    {"diff_evo", "diff_evolution"},     {"de", "diff_evolution"},
    {"ga", "genetic"},                  {"sa", "annealing"},
};

const kopt_tune_strategy *kopt_tune_strategy_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t a = 0; a < sizeof(aliases) / sizeof(aliases[0]); a++)
        if (strcmp(aliases[a][0], name) == 0)
            name = aliases[a][1];
    for (int i = 0; kopt_tune_strategies[i]; i++)
        if (strcmp(kopt_tune_strategies[i]->name, name) == 0)
            return kopt_tune_strategies[i];
    return NULL;
}
