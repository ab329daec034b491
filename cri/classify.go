package cri

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Class is the outcome of one probed call.
type Class string

// The classes a call can fall into; the values are metric label values.
const (
	ClassOK          Class = "ok"
	ClassSlow        Class = "slow"
	ClassTimeout     Class = "timeout"
	ClassUnreachable Class = "unreachable"
	ClassTooLarge    Class = "too_large"
	ClassError       Class = "error"
	ClassCanceled    Class = "canceled"
	// ClassUnimplemented: the runtime does not implement the method (a list
	// stream on containerd before 2.4); not a failure, the kubelet falls
	// back to the unary list.
	ClassUnimplemented Class = "unimplemented"
)

// Classes lists every class in the order reports show them.
var Classes = []Class{ClassOK, ClassSlow, ClassTimeout, ClassUnreachable, ClassTooLarge, ClassError, ClassCanceled, ClassUnimplemented}

// IsFailure reports whether the class counts as an error of the call.
func (c Class) IsFailure() bool {
	switch c {
	case ClassTimeout, ClassUnreachable, ClassTooLarge, ClassError:
		return true
	}
	return false
}

// ClassifyError maps a call's error to a class; err must not be nil.
func ClassifyError(err error) Class {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return ClassTimeout
	case errors.Is(err, context.Canceled):
		return ClassCanceled
	}
	switch status.Code(err) {
	case codes.DeadlineExceeded:
		return ClassTimeout
	case codes.Canceled:
		return ClassCanceled
	case codes.Unavailable:
		return ClassUnreachable
	case codes.ResourceExhausted:
		return ClassTooLarge
	}
	return ClassError
}
