package critest

import (
	"io"

	"google.golang.org/grpc"
)

// Stream hands out Msgs one per Recv, then io.EOF, or Err on the first
// Recv (as gRPC delivers Unimplemented). The ClientStream methods it does
// not define are never called by the code under test. For one goroutine.
type Stream[T any] struct {
	grpc.ClientStream
	Msgs []*T
	Err  error
}

// Recv returns the next message, io.EOF after the last, or Err.
func (s *Stream[T]) Recv() (*T, error) {
	if s.Err != nil {
		return nil, s.Err
	}
	if len(s.Msgs) == 0 {
		return nil, io.EOF
	}
	m := s.Msgs[0]
	s.Msgs = s.Msgs[1:]
	return m, nil
}
