package fence

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseMountInfo(t *testing.T) {
	for line, want := range map[string]mountEntry{
		"36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue": {
			ID: 36, Parent: 35, Major: 98, Root: "/mnt1", MountPoint: "/mnt2", FSType: "ext3", Source: "/dev/root"},
		"22 1 0:21 / /proc rw,nosuid - proc proc rw": {
			ID: 22, Parent: 1, Minor: 21, Root: "/", MountPoint: "/proc", FSType: "proc", Source: "proc"},
		`5 1 0:3 / /a\040b\011c\012d\134e rw shared:1 master:2 propagate_from:3 - tmpfs  rw`: {
			ID: 5, Parent: 1, Minor: 3, Root: "/", MountPoint: "/a b\tc\nd\\e", FSType: "tmpfs", Source: ""},
		`6 1 0:3 / /x\8\777\04\ rw - tmpfs t rw`: {
			ID: 6, Parent: 1, Minor: 3, Root: "/", MountPoint: `/x\8\777\04\`, FSType: "tmpfs", Source: "t"},
	} {
		got, err := parseMountInfo(line)
		if err != nil || got != want {
			t.Errorf("parseMountInfo(%q) =\n%+v, %v\nwant %+v", line, got, err, want)
		}
	}
	for _, bad := range []string{
		"",
		"36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 ext3 /dev/root rw",
		"36 35 98:0 /mnt1 /mnt2 rw - ext3",
		"x 35 98:0 /mnt1 /mnt2 rw - ext3 /dev/root rw",
		"36 y 98:0 /mnt1 /mnt2 rw - ext3 /dev/root rw",
		"36 35 98:0 - /mnt2 rw ext3 /dev/root rw",
		"36 35 98 /mnt1 /mnt2 rw - ext3 /dev/root rw",
		"36 35 98:x /mnt1 /mnt2 rw - ext3 /dev/root rw",
		"36 35 :0 /mnt1 /mnt2 rw - ext3 /dev/root rw",
		"36 35 4294967296:0 /mnt1 /mnt2 rw - ext3 /dev/root rw",
	} {
		if _, err := parseMountInfo(bad); err == nil {
			t.Errorf("parseMountInfo(%q) succeeded; want an error", bad)
		}
	}
}

func FuzzParseMountInfo(f *testing.F) {
	f.Add("36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue")
	f.Add(`5 1 0:3 / /a\040b\011c rw shared:1 - tmpfs  rw`)
	f.Add(`6 1 0:3 / /x\8\777\04\ rw - tmpfs t rw`)
	f.Add("1 2 3 4 5 6 - ")
	f.Add("- - - - - - - - -")
	f.Add("1 2 259:65535 / / rw - ext4 /dev/nvme0n1p1 rw")
	f.Add("1 2 +3:-0 / / rw - ext4 x rw")
	f.Fuzz(func(t *testing.T, line string) {
		e, err := parseMountInfo(line)
		if err != nil {
			return
		}
		maj, min, _ := strings.Cut(strings.Split(line, " ")[2], ":")
		if noLeadingZeros(maj)+":"+noLeadingZeros(min) != fmt.Sprintf("%d:%d", e.Major, e.Minor) {
			t.Errorf("device %d:%d is not field 3 of %q", e.Major, e.Minor, line)
		}
		if len(e.MountPoint) > len(line) {
			t.Errorf("mount point %q longer than its line %q", e.MountPoint, line)
		}
		if !strings.Contains(line, `\`) && !strings.Contains(line, " "+e.MountPoint+" ") {
			t.Errorf("mount point %q is not a field of %q", e.MountPoint, line)
		}
	})
}

// noLeadingZeros is a decimal number's digits as %d writes them.
func noLeadingZeros(s string) string {
	if t := strings.TrimLeft(s, "0"); t != "" {
		return t
	}
	return "0"
}
