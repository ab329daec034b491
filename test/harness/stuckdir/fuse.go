package stuckdir

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// stuckRoot is the root of the FUSE file system: empty, and its Mkdir does
// not answer until release is closed (then it fails with EIO).
type stuckRoot struct {
	fs.Inode
	release  <-chan struct{}
	received chan struct{} // closed at the first Mkdir request
	once     sync.Once
}

var _ fs.NodeMkdirer = (*stuckRoot)(nil)

// Mkdir holds the request until release (or the kernel interrupts it).
func (r *stuckRoot) Mkdir(ctx context.Context, _ string, _ uint32, _ *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	r.once.Do(func() { close(r.received) })
	select {
	case <-r.release:
		return nil, syscall.EIO
	case <-ctx.Done():
		return nil, syscall.EINTR
	}
}

// mountStuck mounts root on mnt with mount(2) itself (no fusermount),
// open to other users, and serves it.
func mountStuck(mnt string, root *stuckRoot) (*fuse.Server, error) {
	opts := &fs.Options{MountOptions: fuse.MountOptions{
		DirectMountStrict: true,
		AllowOther:        true,
		FsName:            "hangwatch-stuckdir",
		Name:              "stuckdir",
	}}
	server, err := fuse.NewServer(fs.NewNodeFS(root, opts), mnt, &opts.MountOptions)
	if err != nil {
		return nil, fmt.Errorf("mount FUSE on %s: %w", mnt, err)
	}
	go server.Serve()
	if err := server.WaitMount(); err != nil { // mounted, but INIT failed
		_ = unix.Unmount(mnt, unix.MNT_DETACH)
		return nil, fmt.Errorf("FUSE on %s: %w", mnt, err)
	}
	// go-fuse's direct mount leaves its /dev/fuse fd inheritable (only the
	// fusermount path sets close-on-exec): fix it so that the mkdir
	// processes, and anything else this binary starts, do not hold it.
	cloexecFuseFDs()
	return server, nil
}

// cloexecFuseFDs sets close-on-exec on this process's /dev/fuse fds.
func cloexecFuseFDs() {
	entries, _ := os.ReadDir("/proc/self/fd")
	for _, e := range entries {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && target == "/dev/fuse" {
			if fd, err := strconv.Atoi(e.Name()); err == nil {
				syscall.CloseOnExec(fd)
			}
		}
	}
}

// fuseConnID is the FUSE connection of the file system mounted on mnt (the
// minor of its device), as named in /sys/fs/fuse/connections.
func fuseConnID(mnt string) (uint32, error) {
	var sfs unix.Statfs_t
	if err := unix.Statfs(mnt, &sfs); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", mnt, err)
	}
	if sfs.Type != unix.FUSE_SUPER_MAGIC {
		return 0, fmt.Errorf("%s is not a FUSE mount yet (type %#x)", mnt, sfs.Type)
	}
	var st unix.Stat_t
	if err := unix.Stat(mnt, &st); err != nil {
		return 0, fmt.Errorf("stat %s: %w", mnt, err)
	}
	return unix.Minor(st.Dev), nil
}

// abortFuseConn aborts FUSE connection id through the fusectl file
// system: every request waiting on it fails with ENOTCONN. fusectl is
// mounted on scratch (and unmounted) when /sys/fs/fuse/connections is not
// mounted.
func abortFuseConn(id uint32, scratch string) error {
	name := strconv.FormatUint(uint64(id), 10)
	abort := filepath.Join("/sys/fs/fuse/connections", name, "abort")
	if _, err := os.Stat(abort); err != nil {
		if err := os.MkdirAll(scratch, 0o700); err != nil {
			return err
		}
		if err := unix.Mount("fusectl", scratch, "fusectl", 0, ""); err != nil {
			return fmt.Errorf("mount fusectl: %w", err)
		}
		defer func() { _ = unix.Unmount(scratch, 0) }()
		abort = filepath.Join(scratch, name, "abort")
	}
	if err := os.WriteFile(abort, []byte("1"), 0o200); err != nil {
		return fmt.Errorf("abort FUSE connection %s: %w", name, err)
	}
	return nil
}

// mounted tells whether path is a mount point in /proc/self/mountinfo.
func mounted(path string) (bool, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 4 && unescapeMountinfo(fields[4]) == path {
			return true, nil
		}
	}
	return false, nil
}

// unescapeMountinfo undoes the octal escapes (\040 for a space...) of a
// mountinfo path.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
