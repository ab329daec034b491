// Package boundedfile reads a configuration file of bounded size.
package boundedfile

import (
	"fmt"
	"io"
	"os"
)

// Read reads the file at path, refusing one larger than max bytes.
func Read(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	raw, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) > max {
		return nil, fmt.Errorf("%s: more than %d bytes", path, max)
	}
	return raw, nil
}
