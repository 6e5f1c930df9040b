extern "C" {
void dummy_cuda_dependency();
}

void dummy_cuda_dependency() {}
