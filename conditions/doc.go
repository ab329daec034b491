// Package conditions turns observations into hangwatch's node conditions.
// It knows observations (plain values with timestamps), never gRPC, HTTP or
// regexps. Conditions use problem polarity: True means bad.
package conditions
