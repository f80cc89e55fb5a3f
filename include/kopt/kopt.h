/* kopt/kopt.h: the whole public API of libkopt (see each header for its module). */
#ifndef KOPT_KOPT_H
#define KOPT_KOPT_H

#include "kopt/core.h"
#include "kopt/expr.h"
#include "kopt/problem.h"
#include "kopt/compile.h"
#include "kopt/device.h"
#include "kopt/eval.h"
#include "kopt/store.h"
#include "kopt/proc.h"
#include "kopt/worker.h"
#include "kopt/sandbox.h"
#include "kopt/tune.h"
#include "kopt/run.h"
#include "kopt/llm.h"
#include "kopt/agent.h"
#include "kopt/search.h"
#include "kopt/cute.h"
#include "kopt/kb.h"
#include "kopt/scale.h"
#include "kopt/serve.h"

#endif
