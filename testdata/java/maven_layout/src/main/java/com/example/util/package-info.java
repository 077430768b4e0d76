/**
 * Small utilities shared by the example.
 */
package com.example.util;
