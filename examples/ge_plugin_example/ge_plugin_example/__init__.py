"""An example ge plugin: the custom operator com.example::RMSNorm and the fuse-rmsnorm pass."""
