package main

import "syscall"

// childProcAttr makes a serve child process get SIGKILL when the test process dies
// (prctl(2) PR_SET_PDEATHSIG), so that a test binary that panics or times out leaves no
// server running.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
