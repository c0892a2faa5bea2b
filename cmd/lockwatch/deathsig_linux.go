package main

import "syscall"

// dieWithLockwatch makes the kernel SIGKILL the program if lockwatch dies
// first (the OOM killer, kill -9, a supervisor's timeout): nothing renews
// the lease then, the key expires by its TTL, and another host may take
// it, so the program must not run on. It reaches the program itself, not
// what the program started (its group gets nothing: lockwatch is gone).
// Go forks from threads it never ends, so the parent thread's death is
// lockwatch's.
func dieWithLockwatch(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
