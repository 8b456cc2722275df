// Command pause is the sandbox ("pause") container of the single-node test cluster: PID 1 of every
// pod sandbox, holding the pod's namespaces open. It sleeps until SIGINT or SIGTERM and reaps any
// child that is re-parented to it, so zombies never accumulate in a pod that shares its PID
// namespace. Being a static Go binary, it is packed into an image without a registry.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// reap collects every exited child without blocking and returns how many it collected.
func reap() int {
	n := 0
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return n
		}
		n++
	}
}

func main() {
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "pause: warning: not running as PID 1")
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s == syscall.SIGCHLD {
			reap()
			continue
		}
		// A clean exit on INT/TERM: the runtime is tearing the sandbox down.
		os.Exit(0)
	}
}
