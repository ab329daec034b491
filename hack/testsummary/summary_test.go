package main

import (
	"bufio"
	"strings"
	"testing"
)

const stream = `{"Action":"start","Package":"example.com/a"}
{"Action":"run","Package":"example.com/a","Test":"TestOK"}
{"Action":"output","Package":"example.com/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"run","Package":"example.com/a","Test":"TestOK/sub"}
{"Action":"pass","Package":"example.com/a","Test":"TestOK/sub"}
{"Action":"pass","Package":"example.com/a","Test":"TestOK"}
{"Action":"run","Package":"example.com/a","Test":"TestNeedsRoot"}
{"Action":"output","Package":"example.com/a","Test":"TestNeedsRoot","Output":"=== RUN   TestNeedsRoot\n"}
{"Action":"output","Package":"example.com/a","Test":"TestNeedsRoot","Output":"    x_test.go:9: needs root\n"}
{"Action":"output","Package":"example.com/a","Test":"TestNeedsRoot","Output":"--- SKIP: TestNeedsRoot (0.00s)\n"}
{"Action":"skip","Package":"example.com/a","Test":"TestNeedsRoot"}
{"Action":"run","Package":"example.com/a","Test":"TestBroken"}
{"Action":"output","Package":"example.com/a","Test":"TestBroken","Output":"    x_test.go:12: want 1, got 2\n"}
{"Action":"fail","Package":"example.com/a","Test":"TestBroken"}
{"Action":"run","Package":"example.com/a","Test":"TestHangs"}
{"Action":"output","Package":"example.com/a","Test":"TestHangs","Output":"panic: test timed out\n"}
{"Action":"output","Package":"example.com/a","Output":"FAIL\texample.com/a\t30.0s\n"}
{"Action":"fail","Package":"example.com/a"}
not json: vet says hello
{"Action":"output","Package":"example.com/b","Output":"ok  \texample.com/b\t0.1s\n"}
{"Action":"pass","Package":"example.com/b"}
`

func TestSummary(t *testing.T) {
	s := newSummary()
	var out strings.Builder
	if err := s.read(bufio.NewReader(strings.NewReader(stream)), &out); err != nil {
		t.Fatal(err)
	}
	s.report(&out)
	got := out.String()
	for _, want := range []string{
		"want 1, got 2",                        // a failed test's output
		"--- FAIL: TestHangs (did not finish)", // a crash's unfinished test
		"panic: test timed out",
		"FAIL\texample.com/a\t30.0s",
		"not json: vet says hello",
		"ok  \texample.com/b",
		"  a.TestNeedsRoot: x_test.go:9: needs root\n",
		"failed packages: example.com/a\n",
		"why they failed (each test's last messages; its whole output is above):\n  a.TestBroken\n    x_test.go:12: want 1, got 2\n  a.TestHangs\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "=== RUN   TestOK") {
		t.Errorf("a passing test's output was shown:\n%s", got)
	}
	if want := "tests: 1 passed, 2 failed, 1 skipped"; !strings.HasSuffix(got, want+"\n") {
		t.Errorf("closing line: want %q, got:\n%s", want, got)
	}
	if s.ok() {
		t.Error("ok() with failures")
	}
}

func FuzzSummary(f *testing.F) {
	f.Add(stream)
	f.Fuzz(func(t *testing.T, in string) {
		s := newSummary()
		var out strings.Builder
		_ = s.read(bufio.NewReader(strings.NewReader(in)), &out)
		s.report(&out)
	})
}
