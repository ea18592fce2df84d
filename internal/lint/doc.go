// Package lint holds repository-wide checks that run with the unit tests: every package has exactly one
// package doc comment, every exported name is documented, and no function of non-test code is more complex
// than a ceiling (cyclomatic complexity 20, today's exceptions named with their own).
package lint
