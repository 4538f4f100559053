"""An example ge plugin: the custom operators com.example::RMSNorm (a decomposition into graph ops)
and com.example::SwiGLU (a tile kernel), and the fuse-rmsnorm and fuse-swiglu passes."""
