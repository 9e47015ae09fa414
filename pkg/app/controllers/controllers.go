// Package controllers registers every hivekeeper controller with pkg/app.
// Importing it is what makes a binary or a test run the full set.
package controllers
