//go:build !linux

package main

import "syscall"

// childProcAttr is nil where there is no parent-death signal: a serve child process
// outlives a test process that dies.
func childProcAttr() *syscall.SysProcAttr { return nil }
