// Package kernellog reads kernel log records (from /dev/kmsg or a saved
// file), matches them against rules in node-problem-detector's
// system-log-monitor format (plus optional fields for clearing and counting),
// and turns matches into permanent condition states and rate-limited events.
//
// Matching is built for floods: every rule's required literals go into one
// Aho-Corasick automaton, so a line costs one pass over its bytes and only
// rules whose literals appear run their regular expression.
package kernellog
