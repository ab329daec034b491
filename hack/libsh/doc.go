// Package libsh tests the shell functions of hack/lib.sh that the scripts
// rely on to clean up: run_scope, run_child and the sweep behind them.
package libsh
