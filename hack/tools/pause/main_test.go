package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// isZombie reports whether process pid has exited and awaits reaping.
func isZombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name: "pid (comm) S ...".
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && strings.HasPrefix(string(b[i+1:]), " Z")
}

func TestReapCollectsExitedChildren(t *testing.T) {
	var pids []int
	for range 3 {
		cmd := exec.Command("/bin/true")
		if err := cmd.Start(); err != nil {
			t.Skipf("cannot start a child: %v", err)
		}
		// Deliberately no cmd.Wait: the child stays a zombie until reap collects it.
		pids = append(pids, cmd.Process.Pid)
	}
	for _, pid := range pids {
		for i := 0; !isZombie(pid); i++ {
			if i > 500 {
				t.Fatalf("child %d never exited", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if n := reap(); n != len(pids) {
		t.Fatalf("reaped %d children, want %d", n, len(pids))
	}
	for _, pid := range pids {
		if isZombie(pid) {
			t.Fatalf("child %d is still a zombie", pid)
		}
	}
	if n := reap(); n != 0 {
		t.Fatalf("reaped %d children when none were left", n)
	}
}
