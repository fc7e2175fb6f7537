package scheduler

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// holderGone reports whether the runner lease's holder is a process of this
// host that no longer runs: this very holder name (a restart that got the
// same pid, as pid 1 in a container does after a kill -9) or a pid of this
// host's default "<host>:<pid>" name that no process has. Waiting for such a
// lease to expire is the expected recovery, not another runner.
func (s *Scheduler) holderGone(holder string) bool {
	if holder == s.holder {
		return true
	}
	host, pidText, ok := strings.Cut(holder, ":")
	if !ok {
		return false
	}
	if me, err := os.Hostname(); err != nil || host != me {
		return false
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return false
	}
	return !processAlive(pid)
}

// processAlive reports whether a process with pid exists (signal 0 checks
// without signalling; EPERM means it exists but belongs to another user).
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}
