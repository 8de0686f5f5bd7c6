# y = x * a + b on an Ascend A2/A3 vector core with PyPTO (tensor level), 128x128 fp32 tiles.
# nbuffer=1: vec_nbuffer_setting merges that many isomorphic tile subgraphs per task.
import pypto


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU},
                    pass_options={"valid_shape_optimize": 1, "vec_nbuffer_setting": {"DEFAULT": 1}})
def axpb(x: pypto.Tensor[[pypto.DYNAMIC, pypto.DYNAMIC], pypto.DT_FP32],
         y: pypto.Tensor[[pypto.DYNAMIC, pypto.DYNAMIC], pypto.DT_FP32], a: float, b: float):
    pypto.set_vec_tile_shapes(128, 128)
    rows, cols = x.shape[0], x.shape[1]
    for i in pypto.loop(0, (rows + 127) // 128, 1, name="rows", idx_name="i"):
        for j in pypto.loop(0, (cols + 127) // 128, 1, name="cols", idx_name="j", unroll_list=[4]):
            t = pypto.view(x, [128, 128], [i * 128, j * 128],
                           valid_shape=[pypto.min(128, rows - i * 128), pypto.min(128, cols - j * 128)])
            pypto.assemble(t * a + b, [i * 128, j * 128], y)
