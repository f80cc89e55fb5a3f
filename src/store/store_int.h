/* Internal: the store's handle and the schema pieces shared between its files. */
#ifndef KOPT_STORE_INT_H
#define KOPT_STORE_INT_H

#include "kopt/store.h"

#include <sqlite3.h>

struct kopt_store {
    sqlite3 *db;
};

/* Migration 0 -> 1: devices, problems, candidates, evaluations. */
#define KOPT__STORE_BASE_SCHEMA                                                                \
    "CREATE TABLE devices (uuid TEXT PRIMARY KEY, name TEXT NOT NULL, cc TEXT NOT NULL,"    \
    "  sm_count INTEGER, info_json TEXT, ceilings_json TEXT, measured_at TEXT);"            \
    "CREATE TABLE problems (hash TEXT PRIMARY KEY, name TEXT NOT NULL, path TEXT,"          \
    "  first_seen TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')));"                    \
    "CREATE TABLE candidates (hash TEXT PRIMARY KEY, problem_hash TEXT, path TEXT,"         \
    "  source TEXT NOT NULL, is_reference INTEGER NOT NULL DEFAULT 0);"                     \
    "CREATE TABLE evaluations (id INTEGER PRIMARY KEY AUTOINCREMENT,"                       \
    "  created_at TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')),"                     \
    "  problem_hash TEXT NOT NULL, candidate_hash TEXT, device_uuid TEXT, arch TEXT,"       \
    "  sizes_json TEXT, seed INTEGER, verdict TEXT NOT NULL, message TEXT,"                 \
    "  median_ms REAL, min_ms REAL, p10_ms REAL, p90_ms REAL, reps INTEGER,"                \
    "  ref_median_ms REAL, speedup REAL, pct_of_bound REAL, achieved_gbs REAL,"             \
    "  achieved_gflops REAL, compile_cache_hit INTEGER, compile_ms REAL, verify_ms REAL,"   \
    "  time_ms REAL, total_ms REAL, compile_log TEXT, result_json TEXT);"                   \
    "CREATE INDEX evaluations_by_problem ON evaluations(problem_hash, candidate_hash);"

/* Migration 1 -> 2 (findings.c's tables). */
#define KOPT__STORE_FINDINGS_SCHEMA                                                            \
    "CREATE TABLE profiles (id INTEGER PRIMARY KEY AUTOINCREMENT,"                             \
    "  created_at TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')),"                        \
    "  problem_hash TEXT NOT NULL, candidate_hash TEXT NOT NULL, eval_id INTEGER,"             \
    "  source TEXT, median_ms REAL, collect_ms REAL, passes INTEGER, metrics_json TEXT);"      \
    "CREATE INDEX profiles_by_problem ON profiles(problem_hash, id);"                          \
    "CREATE TABLE findings (id INTEGER PRIMARY KEY AUTOINCREMENT,"                             \
    "  profile_id INTEGER NOT NULL REFERENCES profiles(id),"                                   \
    "  problem_hash TEXT NOT NULL, candidate_hash TEXT NOT NULL, tool TEXT NOT NULL,"          \
    "  kernel TEXT, title TEXT, gain REAL, confidence REAL, median_ms REAL);"                  \
    "CREATE INDEX findings_by_profile ON findings(profile_id, tool);"                          \
    "CREATE TABLE resolutions (id INTEGER PRIMARY KEY AUTOINCREMENT,"                          \
    "  created_at TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')),"                        \
    "  problem_hash TEXT NOT NULL, tool TEXT NOT NULL, earlier_candidate TEXT NOT NULL,"       \
    "  later_candidate TEXT NOT NULL, earlier_profile INTEGER, later_profile INTEGER,"          \
    "  predicted_gain REAL, realized_gain REAL, earlier_ms REAL, later_ms REAL);"              \
    "CREATE INDEX resolutions_by_tool ON resolutions(tool);"

/* Migration 2 -> 3 (tune.c's tables): tuning runs and every configuration they evaluated,
 * keyed by a hash of the tuning key (problem, template source, sizes, device). */
#define KOPT__STORE_TUNE_SCHEMA                                                                \
    "CREATE TABLE tune_runs (id INTEGER PRIMARY KEY AUTOINCREMENT,"                            \
    "  created_at TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')),"                        \
    "  key_hash TEXT NOT NULL, problem TEXT, problem_hash TEXT, template_hash TEXT,"           \
    "  sizes TEXT, device TEXT, device_uuid TEXT, template_path TEXT, strategy TEXT,"          \
    "  options TEXT, seed INTEGER, objective TEXT, max_evals INTEGER,"                         \
    "  finished INTEGER NOT NULL DEFAULT 0, finished_at TEXT, stop TEXT, best_label TEXT,"     \
    "  best_value REAL);"                                                                      \
    "CREATE INDEX tune_runs_by_key ON tune_runs(key_hash, id);"                                \
    "CREATE TABLE tune_evals (id INTEGER PRIMARY KEY AUTOINCREMENT,"                           \
    "  run_id INTEGER REFERENCES tune_runs(id),"                                               \
    "  created_at TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')),"                        \
    "  key_hash TEXT NOT NULL, label TEXT NOT NULL, state TEXT NOT NULL, time_ms REAL,"        \
    "  energy_mj REAL, power_w REAL, compile_ms REAL, eval_ms REAL, registers INTEGER,"        \
    "  spill_bytes INTEGER, smem_bytes INTEGER, verdict TEXT, message TEXT,"                   \
    "  findings_json TEXT, UNIQUE(key_hash, label));"

/* Migration 3 -> 4 (runs.c): runs (one row per kopt eval, profile, tune, ... with its
 * command line and environment), and the run each evaluation, profile and tuning run
 * belongs to (NULL in rows written before). */
#define KOPT__STORE_RUNS_SCHEMA                                                                \
    "CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL,"             \
    "  status TEXT NOT NULL DEFAULT 'running', command TEXT,"                                  \
    "  parent_id INTEGER REFERENCES runs(id),"                                                 \
    "  started_at TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')), finished_at TEXT,"      \
    "  kopt_version TEXT, host TEXT, device_name TEXT, device_uuid TEXT, device_cc TEXT,"      \
    "  driver_version INTEGER, nvrtc_version TEXT, clock_khz INTEGER, mem_clock_khz INTEGER,"  \
    "  summary TEXT);"                                                                         \
    "CREATE INDEX runs_by_kind ON runs(kind, id);"                                             \
    "ALTER TABLE evaluations ADD COLUMN run_id INTEGER REFERENCES runs(id);"                   \
    "ALTER TABLE evaluations ADD COLUMN tag TEXT;"                                             \
    "ALTER TABLE profiles ADD COLUMN run_id INTEGER REFERENCES runs(id);"                      \
    "ALTER TABLE tune_runs ADD COLUMN run_id INTEGER REFERENCES runs(id);"                     \
    "CREATE INDEX evaluations_by_run ON evaluations(run_id);"

/* Helpers shared by the store's files (store.c): an error naming `what` with SQLite's
 * message; a text parameter or NULL; a text column copied into a buffer ("" for NULL). */
kopt_status kopt__store_err(kopt_store *s, kopt_ctx *ctx, const char *what);
void kopt__store_bind_text(sqlite3_stmt *st, int i, const char *v);
void kopt__store_copy_col(sqlite3_stmt *st, int col, char *buf, size_t len);
/* A column's text as a new string (NULL for SQL NULL). */
char *kopt__store_dup_col(sqlite3_stmt *st, int col);
/* Migration 4 -> 5 (llm.c's table): every LLM exchange (kopt_store_llm_record). run_id is
 * the run that asked (NULL: none, as for kopt llm ping); no API key is ever stored. */
#define KOPT__STORE_LLM_SCHEMA                                                                 \
    "CREATE TABLE llm_exchanges (id INTEGER PRIMARY KEY AUTOINCREMENT,"                        \
    "  created_at TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),"                        \
    "  run_id INTEGER, role TEXT, tag TEXT, backend TEXT NOT NULL, model TEXT,"                \
    "  request_hash TEXT NOT NULL, request_json TEXT NOT NULL, outcome TEXT NOT NULL,"         \
    "  reply_text TEXT, finish_reason TEXT, reply_model TEXT, error TEXT, http_status INTEGER," \
    "  attempts INTEGER, prompt_tokens INTEGER, completion_tokens INTEGER,"                    \
    "  cached_tokens INTEGER, latency_ms REAL, cost REAL, cost_known INTEGER);"                \
    "CREATE INDEX llm_exchanges_by_run ON llm_exchanges(run_id, id);"                          \
    "CREATE INDEX llm_exchanges_by_hash ON llm_exchanges(request_hash);"

/* Migration 5 -> 6 (opt.c's tables): kopt optimize's search trees (one row per tree, one
 * per node, the node's fields as JSON) and the search memory kept across runs. */
#define KOPT__STORE_OPT_SCHEMA                                                                 \
    "CREATE TABLE opt_trees (tree_id INTEGER PRIMARY KEY,"                                     \
    "  created_at TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')),"                        \
    "  problem_hash TEXT, problem_path TEXT, options_json TEXT);"                              \
    "CREATE TABLE opt_nodes (tree_id INTEGER NOT NULL, node INTEGER NOT NULL,"                 \
    "  parent INTEGER, state TEXT NOT NULL, source_hash TEXT, verdict TEXT,"                   \
    "  updated_at TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')), node_json TEXT NOT NULL," \
    "  PRIMARY KEY (tree_id, node));"                                                          \
    "CREATE TABLE opt_memory (id INTEGER PRIMARY KEY AUTOINCREMENT,"                           \
    "  created_at TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')),"                        \
    "  problem_hash TEXT, problem TEXT, class TEXT, plan_kind TEXT, tool TEXT,"                \
    "  predicted_gain REAL, realized_gain REAL, verdict TEXT, tree_id INTEGER, node INTEGER,"  \
    "  UNIQUE (tree_id, node));"                                                               \
    "CREATE INDEX opt_memory_by_problem ON opt_memory(problem_hash, class);"

/* Migration 6 -> 7 (opt.c): the searches of the agents' code-search tool, one row per
 * query of a conversation turn, with the text fed back to the model (a replay answers from
 * it) and the hits as JSON. */
#define KOPT__STORE_OPT_SEARCH_SCHEMA                                                          \
    "CREATE TABLE opt_searches (tree_id INTEGER NOT NULL, key TEXT NOT NULL,"                  \
    "  turn INTEGER NOT NULL, idx INTEGER NOT NULL,"                                           \
    "  created_at TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),"                        \
    "  query TEXT NOT NULL, result TEXT, hits_json TEXT, nhits INTEGER, query_ms REAL,"        \
    "  PRIMARY KEY (tree_id, key, turn, idx));"

/* Migration 7 -> 8 (bench.c's tables): kopt bench suites (one row per suite: its options
 * and, once finished, its summary) and their rows (one per problem, written as each is
 * evaluated, so a killed suite resumes where it stopped). */
#define KOPT__STORE_BENCH_SCHEMA                                                               \
    "CREATE TABLE bench_suites (suite_id INTEGER PRIMARY KEY,"                                 \
    "  created_at TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')),"                        \
    "  problems_dir TEXT, candidates TEXT, options_json TEXT, summary_json TEXT);"             \
    "CREATE TABLE bench_rows (suite_id INTEGER NOT NULL, problem TEXT NOT NULL,"               \
    "  run_id INTEGER, created_at TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),"        \
    "  verdict TEXT, row_json TEXT NOT NULL, PRIMARY KEY (suite_id, problem));"

/* Migration 8 -> 9 (scale-out, docs/scale.md): where each measurement was taken. A tuning
 * run may spread over several GPUs and MPI ranks, and a time is only comparable with times
 * from the same device model and clocks, so every tuning outcome records its GPU (ordinal,
 * name, UUID, clocks), host and rank, and every evaluation its GPU ordinal and host (its
 * UUID was recorded already); each tuning run records the devices it used. NULL in rows
 * written before. */
#define KOPT__STORE_SCALE_SCHEMA                                                               \
    "ALTER TABLE tune_evals ADD COLUMN device_index INTEGER;"                                  \
    "ALTER TABLE tune_evals ADD COLUMN device_name TEXT;"                                      \
    "ALTER TABLE tune_evals ADD COLUMN device_uuid TEXT;"                                      \
    "ALTER TABLE tune_evals ADD COLUMN clock_mhz INTEGER;"                                     \
    "ALTER TABLE tune_evals ADD COLUMN mem_clock_mhz INTEGER;"                                 \
    "ALTER TABLE tune_evals ADD COLUMN host TEXT;"                                             \
    "ALTER TABLE tune_evals ADD COLUMN rank INTEGER;"                                          \
    "ALTER TABLE evaluations ADD COLUMN device_index INTEGER;"                                 \
    "ALTER TABLE evaluations ADD COLUMN host TEXT;"                                            \
    "ALTER TABLE tune_runs ADD COLUMN devices TEXT;"

/* Migration 9 -> 10 (kopt optimize --gpus, docs/scale.md): the GPU that evaluated each
 * search node (a search may spread its evaluations over several), beside its JSON. NULL in
 * rows written before, for pending nodes, and for nodes no GPU evaluated (the scripted
 * evaluator without --gpus). */
#define KOPT__STORE_OPT_GPU_SCHEMA                                                             \
    "ALTER TABLE opt_nodes ADD COLUMN device_index INTEGER;"                                   \
    "ALTER TABLE opt_nodes ADD COLUMN device_name TEXT;"                                       \
    "ALTER TABLE opt_nodes ADD COLUMN host TEXT;"

/* Migration 10 -> 11 (baselines.c): the torch.compile baselines of PyTorch references, kept
 * across runs (docs/kernelbench.md): one row per key (problem, device, torch version, main
 * sizes, the settings that change the number), its timing as JSON (kopt_timing and the
 * bracket), eager's median in the same run, its note, when it was measured, and the run and
 * evaluation that measured it. A key measured again replaces its row. */
#define KOPT__STORE_BASELINES_SCHEMA                                                           \
    "CREATE TABLE torch_baselines (id INTEGER PRIMARY KEY AUTOINCREMENT,"                      \
    "  problem_hash TEXT NOT NULL, device TEXT NOT NULL, torch_version TEXT NOT NULL,"        \
    "  sizes TEXT NOT NULL, settings TEXT NOT NULL, median_ms REAL NOT NULL,"                 \
    "  eager_ms REAL, timing_json TEXT NOT NULL, note TEXT, measured_at TEXT NOT NULL,"       \
    "  run_id INTEGER REFERENCES runs(id), eval_id INTEGER,"                                   \
    "  UNIQUE (problem_hash, device, torch_version, sizes, settings));"

#endif
