package fence

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// mountEntry is one line of a mountinfo file (proc(5)).
type mountEntry struct {
	ID, Parent int
	// Major and Minor are field 3, the st_dev of the mount's file system:
	// every mount of one file system shows the same pair, wherever it is
	// mounted and whatever part of it (Root) is mounted there.
	Major, Minor uint32
	Root         string // the mount's root within its file system
	MountPoint   string // field 5, relative to the reading process's root
	FSType       string
	Source       string
}

// parseMountInfo parses one mountinfo line:
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//
// Fields are separated by single spaces (an empty field stays a field); the
// optional fields end at a lone "-", after which come the file system type,
// the source and the super options. Paths are decoded (\040 is a space).
func parseMountInfo(line string) (mountEntry, error) {
	fields := strings.Split(line, " ")
	sep := -1
	for i := 6; i < len(fields); i++ {
		if fields[i] == "-" {
			sep = i
			break
		}
	}
	if sep < 0 || len(fields) < sep+3 {
		return mountEntry{}, fmt.Errorf("mountinfo line %.60q: want 6 fields, optional fields, \"-\" and 3 more", line)
	}
	id, err := strconv.Atoi(fields[0])
	if err != nil {
		return mountEntry{}, fmt.Errorf("mountinfo line %.60q: mount ID: %w", line, err)
	}
	parent, err := strconv.Atoi(fields[1])
	if err != nil {
		return mountEntry{}, fmt.Errorf("mountinfo line %.60q: parent ID: %w", line, err)
	}
	major, minor, err := parseDevice(fields[2])
	if err != nil {
		return mountEntry{}, fmt.Errorf("mountinfo line %.60q: %w", line, err)
	}
	return mountEntry{
		ID:         id,
		Parent:     parent,
		Major:      major,
		Minor:      minor,
		Root:       unescapeOctal(fields[3]),
		MountPoint: unescapeOctal(fields[4]),
		FSType:     unescapeOctal(fields[sep+1]),
		Source:     unescapeOctal(fields[sep+2]),
	}, nil
}

// parseDevice parses mountinfo's "major:minor" field, two decimal numbers.
func parseDevice(field string) (major, minor uint32, err error) {
	maj, min, ok := strings.Cut(field, ":")
	if !ok {
		return 0, 0, fmt.Errorf("device %.20q: want major:minor", field)
	}
	ma, err := strconv.ParseUint(maj, 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("device %.20q: major: %w", field, err)
	}
	mi, err := strconv.ParseUint(min, 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("device %.20q: minor: %w", field, err)
	}
	return uint32(ma), uint32(mi), nil
}

// unescapeOctal decodes the kernel's \ooo escapes (space, tab, newline and
// backslash are written so); a backslash not followed by three octal digits
// worth at most 255 is kept as it is.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			v := int(s[i+1]-'0')<<6 | int(s[i+2]-'0')<<3 | int(s[i+3]-'0')
			if v <= 0xff {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// readMountInfo reads and parses a whole mountinfo file.
func readMountInfo(path string) ([]mountEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read mount table: %w", err)
	}
	var entries []mountEntry
	n := 0
	for line := range strings.Lines(string(data)) {
		n++
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			continue
		}
		e, err := parseMountInfo(line)
		if err != nil {
			return nil, fmt.Errorf("read mount table %s, line %d: %w", path, n, err)
		}
		entries = append(entries, e)
	}
	return entries, nil
}
