package gpus

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// pciFunction makes dir/addr with sysfs's vendor and class attributes.
func pciFunction(t *testing.T, dir, addr, vendor, class string) {
	t.Helper()
	d := filepath.Join(dir, addr)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"vendor": vendor, "class": class} {
		if v == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(d, name), []byte(v+"\n"), 0o444); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOnBusCountsNVIDIADisplayControllersOnly(t *testing.T) {
	dir := t.TempDir()
	pciFunction(t, dir, "0000:87:00.0", "0x10de", "0x030200") // a data-centre GPU (3D controller)
	pciFunction(t, dir, "0000:3b:00.0", "0x10de", "0x030000") // a VGA one
	pciFunction(t, dir, "0000:3b:00.1", "0x10de", "0x040300") // its audio function
	pciFunction(t, dir, "0000:c1:00.0", "0x10de", "0x068000") // an NVSwitch
	pciFunction(t, dir, "0000:00:02.0", "0x8086", "0x030000") // another vendor's GPU
	pciFunction(t, dir, "0000:5e:00.0", "0x10de", "")         // class unreadable
	got, err := OnBus(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"0000:3b:00.0", "0000:87:00.0"}; !slices.Equal(got, want) {
		t.Fatalf("OnBus = %v, want %v", got, want)
	}
	if _, err := OnBus(filepath.Join(dir, "absent")); err == nil || !strings.Contains(err.Error(), "absent") {
		t.Fatalf("OnBus of a missing dir: %v, want an error naming it", err)
	}
}

func readInventory(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := ParseInventory(b)
	if err != nil {
		t.Fatalf("the file written does not parse: %v", err)
	}
	return inv.GPUs
}

func TestCheckRemembersEveryGPUAndNamesTheMissing(t *testing.T) {
	file := filepath.Join(t.TempDir(), "state", "gpus.json")
	four := []string{"0000:1b:00.0", "0000:3b:00.0", "0000:87:00.0", "0000:b1:00.0"}

	res, err := Check(file, four) // the first start: remembered
	if err != nil || len(res.Missing) != 0 || res.Before != nil {
		t.Fatalf("first start: %+v, %v", res, err)
	}
	if got := readInventory(t, file); !slices.Equal(got, four) {
		t.Fatalf("remembered %v, want %v", got, four)
	}

	three := []string{"0000:1b:00.0", "0000:3b:00.0", "0000:b1:00.0"}
	res, err = Check(file, three) // a boot without 87
	if err != nil || !slices.Equal(res.Missing, []string{"0000:87:00.0"}) {
		t.Fatalf("after a boot without 0000:87:00.0: %+v, %v", res, err)
	}
	msg := res.Message(file)
	for _, want := range []string{"3 NVIDIA GPUs on the PCI bus where 4 were before", "missing: 0000:87:00.0", file} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if got := readInventory(t, file); !slices.Equal(got, four) {
		t.Fatalf("a missing GPU was forgotten: %v", got)
	}

	res, err = Check(file, three) // the next start says so again
	if err != nil || len(res.Missing) != 1 {
		t.Fatalf("the next start: %+v, %v", res, err)
	}
	moved := []string{"0000:1b:00.0", "0000:3b:00.0", "0000:b1:00.0", "0000:da:00.0"}
	res, err = Check(file, moved) // a card in another slot: still 87 missing, da remembered
	if err != nil || !slices.Equal(res.Missing, []string{"0000:87:00.0"}) {
		t.Fatalf("with a new slot: %+v, %v", res, err)
	}
	if got := readInventory(t, file); len(got) != 5 {
		t.Fatalf("remembered %v, want the five seen", got)
	}
}

func TestCheckLeavesAFileItCannotReadAlone(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gpus.json")
	bad := []byte(`{"gpus": ["0000:87:00.0", "not-an-address"]}`)
	if err := os.WriteFile(file, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Check(file, []string{"0000:87:00.0"})
	if err == nil || !strings.Contains(err.Error(), `gpus[1]: "not-an-address"`) || !strings.Contains(err.Error(), file) {
		t.Fatalf("Check = %v, want an error naming the file and the entry", err)
	}
	if b, _ := os.ReadFile(file); string(b) != string(bad) {
		t.Fatalf("the file was changed to %q", b)
	}
}

func TestParseInventoryRefusesWhatIsNotOne(t *testing.T) {
	for in, want := range map[string]string{
		`{"gpus": ["0000:87:00.0", "0000:87:00.0"]}`: `"0000:87:00.0" is listed twice`,
		`{"gpus": ["0000:87:00.0 "]}`:                `gpus[0]: "0000:87:00.0 " is not a PCI address`,
		`{"gpus": ["0000:87:00.8"]}`:                 "is not a PCI address",
		`{"gpus": [], "count": 4}`:                   `unknown field "count"`,
		`[]`:                                         "not an inventory",
		strings.Repeat(" ", maxInventoryBytes+1):     "more than",
	} {
		if _, err := ParseInventory([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseInventory(%.40q) = %v, want an error with %q", in, err, want)
		}
	}
}

func FuzzParseInventory(f *testing.F) {
	f.Add([]byte(`{"gpus": ["0000:1b:00.0", "0000:87:00.0"]}`))
	f.Add([]byte(`{"gpus": []}`))
	f.Add([]byte(`{"gpus": null}`))
	f.Add([]byte(`{"gpus": ["0000:87:00.0", "0000:87:00.0"]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		inv, err := ParseInventory(b)
		if err != nil {
			return
		}
		again, err := json.Marshal(inv)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseInventory(again)
		if err != nil || !slices.Equal(back.GPUs, inv.GPUs) {
			t.Fatalf("%q parsed to %v, written as %s, read back as %v, %v", b, inv.GPUs, again, back.GPUs, err)
		}
	})
}
