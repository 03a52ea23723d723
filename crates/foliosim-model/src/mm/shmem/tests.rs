//! Unit tests of shmem: allocation orders, swap-out and swap-in, truncation.
