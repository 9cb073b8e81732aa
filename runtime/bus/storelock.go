package bus

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// storeLockName is the file in an embedded store's dir that the process using the store holds locked.
const storeLockName = "agentrt.lock"

// lockStore takes an exclusive lock on dir for this process. nats-server does not refuse a store dir that another
// process's server is using, and two servers on one store overwrite each other's streams: two serve processes
// given one spool dir would lose requests and trajectories instead of failing. The lock is an flock, so the kernel
// drops it when the process dies (a kill -9 leaves nothing to clean up).
func lockStore(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("bus: store dir: %w", err)
	}
	path := filepath.Join(dir, storeLockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("bus: store lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := ""
		if b, rerr := os.ReadFile(path); rerr == nil && len(b) > 0 {
			holder = " (pid " + strings.TrimSpace(string(b)) + ")"
		}
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("bus: the store %s is in use by another process%s: give each agentrt serve its own --spool-dir (or bus.dir)", dir, holder)
		}
		return nil, fmt.Errorf("bus: store lock %s: %w", path, err)
	}
	// The holder's pid, for the message above; the lock itself is the flock, not the content.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}
