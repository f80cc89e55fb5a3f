/*@kopt {"launches": [{"memset": "c", "value": 0}]} */
// problem: examples/vector_add
// expect: WRONG
// Returns zeros (a memset step and no kernel at all).
