package kernellog

import (
	"errors"
	"fmt"
	"strings"
)

// FacilityKern is the syslog facility of the kernel's own records.
//
// Only the kernel logs at facility kern (0): devkmsg_write, in the
// kernel's kernel/printk/printk.c, starts a write to /dev/kmsg at
// facility = 1 /* LOG_USER */ and, for a "<N>" prefix, takes N's facility
// only "if (LOG_FACILITY(u) != 0)", "to be able to reliably distinguish
// kernel-generated messages from userspace-injected ones" (its comment,
// read at torvalds/linux b17b01533b71; Documentation/ABI/testing/dev-kmsg
// says the same: writes cannot use LOG_KERN). So a process
// that may write /dev/kmsg (root in any container, by default) can log
// `<2>INFO: task containerd:1 blocked ...` at facility user or another,
// never kern; `dmesg -k` shows the kern records alone. A rules file
// matches kern records only unless its "facilities" names others.
const FacilityKern = 0

// facilityNames are syslog's facility names (RFC 5424 and <syslog.h>), by
// number; 12 to 15 have no name in <syslog.h> and are not accepted.
var facilityNames = [...]string{
	0: "kern", 1: "user", 2: "mail", 3: "daemon", 4: "auth", 5: "syslog", 6: "lpr", 7: "news",
	8: "uucp", 9: "cron", 10: "authpriv", 11: "ftp",
	16: "local0", 17: "local1", 18: "local2", 19: "local3", 20: "local4", 21: "local5", 22: "local6", 23: "local7",
}

// FacilityName is the syslog name of facility f, or "other" for a number
// without one (a bounded metric label).
func FacilityName(f int) string {
	if f >= 0 && f < len(facilityNames) && facilityNames[f] != "" {
		return facilityNames[f]
	}
	return "other"
}

// facilityMask is a set of facilities, bit f for facility f.
type facilityMask uint32

// has tells whether facility f is in the set.
func (m facilityMask) has(f int) bool { return f >= 0 && f < 32 && m&(1<<f) != 0 }

// facilitiesOf turns a rules file's "facilities" into a set: kern alone
// when the field is left out. Errors name the field, the index and the value.
func facilitiesOf(names []string) (facilityMask, error) {
	if names == nil {
		return 1 << FacilityKern, nil
	}
	if len(names) == 0 {
		return 0, errors.New(`facilities: empty; leave the field out for "kern" alone`)
	}
	var m facilityMask
	var errs []error
	for i, name := range names {
		f := facilityNumber(name)
		if f < 0 {
			errs = append(errs, fmt.Errorf("facilities[%d] %.40q: not a syslog facility (%s)", i, name, strings.Join(knownFacilities(), ", ")))
			continue
		}
		m |= 1 << f
	}
	return m, errors.Join(errs...)
}

func facilityNumber(name string) int {
	for f, n := range facilityNames {
		if n != "" && n == name {
			return f
		}
	}
	return -1
}

func knownFacilities() []string {
	out := make([]string, 0, len(facilityNames))
	for _, n := range facilityNames {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}
