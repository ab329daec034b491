// Package docs holds hangwatch's pages and the test that keeps the
// commands they print true (commands_test.go).
package docs
