// Package lint holds repository-wide checks that run with the unit tests: every package has exactly one
// package doc comment, and every exported name is documented.
package lint
