package fence

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// taskStat is what Kill needs of a /proc/<pid>/stat.
type taskStat struct {
	comm  string
	state byte
}

// parseStat reads the command name and state letter of a stat line. The name
// may hold spaces and parentheses, so the state is the first field after the
// last ')'.
func parseStat(line string) (taskStat, error) {
	open := strings.IndexByte(line, '(')
	end := strings.LastIndexByte(line, ')')
	if open < 0 || end < open {
		return taskStat{}, fmt.Errorf("stat %.40q: no command name", line)
	}
	rest := strings.TrimLeft(line[end+1:], " ")
	if rest == "" {
		return taskStat{}, fmt.Errorf("stat %.40q: no state after the command name", line)
	}
	return taskStat{comm: line[open+1 : end], state: rest[0]}, nil
}

// readStat reads a stat file; gone says the task has exited.
func readStat(path string) (st taskStat, gone bool, err error) {
	data, err := os.ReadFile(path)
	if vanished(err) {
		return taskStat{}, true, nil
	}
	if err != nil {
		return taskStat{}, false, fmt.Errorf("read %s: %w", path, err)
	}
	st, err = parseStat(string(data))
	if err != nil {
		return taskStat{}, false, fmt.Errorf("read %s: %w", path, err)
	}
	return st, false, nil
}

// vanished says err means the process (or its /proc entry) is gone.
func vanished(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH)
}

// uninterruptible finds a task of pid in uninterruptible sleep: the process
// itself or, where proc has a task/ directory for it, one of its threads. It
// returns a description of that task, or "" when there is none.
func uninterruptible(proc string, pid int) (string, error) {
	dir := filepath.Join(proc, strconv.Itoa(pid))
	st, gone, err := readStat(filepath.Join(dir, "stat"))
	if err != nil || gone {
		return "", err
	}
	if st.state == 'D' {
		return fmt.Sprintf("pid %d (%s)", pid, st.comm), nil
	}
	threads, err := os.ReadDir(filepath.Join(dir, "task"))
	if vanished(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("threads of pid %d: %w", pid, err)
	}
	for _, t := range threads {
		if t.Name() == strconv.Itoa(pid) {
			continue
		}
		ts, _, err := readStat(filepath.Join(dir, "task", t.Name(), "stat"))
		if err != nil {
			return "", err
		}
		if ts.state == 'D' {
			return fmt.Sprintf("pid %d (%s), thread %s (%s),", pid, st.comm, t.Name(), ts.comm), nil
		}
	}
	return "", nil
}

// describePids names pids with their command and state, as far as proc still
// shows them: "12 (sleep, S), 13 (gone)".
func describePids(proc string, pids []int) string {
	parts := make([]string, 0, len(pids))
	for _, pid := range pids {
		st, gone, err := readStat(filepath.Join(proc, strconv.Itoa(pid), "stat"))
		switch {
		case err != nil:
			parts = append(parts, fmt.Sprintf("%d (?)", pid))
		case gone:
			parts = append(parts, fmt.Sprintf("%d (gone)", pid))
		default:
			parts = append(parts, fmt.Sprintf("%d (%s, %c)", pid, st.comm, st.state))
		}
	}
	return strings.Join(parts, ", ")
}
