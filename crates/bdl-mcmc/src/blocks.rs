//! Gibbs blocks from a parameter layout: layer blocks (LBG), node blocks (NBG) and finer node
//! blocks (FNBG).
//!
//! Every parameter of an MLP is linked to the node it feeds: node o of layer l owns its weight
//! row W_l\[o, :\] and its bias b_l\[o\]. A *node block* holds those fan-in + 1 parameters, a
//! *layer block* all of a layer's, and *finer node blocks* cut a node block into consecutive
//! sub-blocks ([`SubBlocks`]). Blocks are listed first layer first, and within a layer by node,
//! which is the order a sweep visits them in.

use bdl_tensor::{ParamLayout, SubBlocks};
use serde::{Deserialize, Serialize};

use bdl_inference::InvalidParam;

use crate::Result;

/// How the parameters are grouped into Gibbs blocks.
///
/// Serialised with an internal tag: `{"kind":"layer"}`, `{"kind":"node"}`,
/// `{"kind":"finer_node","split":[{"Size":10},null,null,null]}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Blocking {
    /// LBG: one block per layer, all its weights and biases.
    Layer,
    /// NBG: one block per node, its weight row and its bias (fan-in + 1 parameters).
    Node,
    /// FNBG: node blocks, with the nodes of layer l cut into sub-blocks by `split[l]` (`None`
    /// keeps that layer's nodes whole). The paper's MNIST runs split the first layer only: the
    /// author's code into sub-blocks of about 10 parameters (`SubBlocks::Size(10)`, 78 per
    /// node), the paper's text into 10 per node (`SubBlocks::Count(10)`).
    FinerNode {
        /// One entry per layer.
        split: Vec<Option<SubBlocks>>,
    },
    /// Subnetwork inference: the blocks of `within` restricted to the flat indices `subset`
    /// (for example a selection of `bdl_laplace::selection`), blocks left empty dropped. Every
    /// other parameter keeps the value the chain starts from (the MAP, for a subnetwork
    /// posterior with the rest fixed).
    Subnetwork {
        /// The parameters sampled, distinct and below D.
        subset: Vec<usize>,
        /// How they are grouped.
        within: Box<Blocking>,
    },
}

/// One Gibbs block: a set of flat parameter indices inside one layer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Block {
    /// The layer (from 0) the parameters belong to.
    pub layer: usize,
    /// The node (output unit of the layer) for node blocks and their sub-blocks; `None` for a
    /// layer block.
    pub node: Option<usize>,
    /// The flat indices into θ, ascending within a node (weights, then the bias).
    pub indices: Vec<usize>,
}

impl Blocking {
    /// The paper's abbreviation: LBG, NBG, FNBG (and SBG for a subnetwork).
    pub fn abbreviation(&self) -> &'static str {
        match self {
            Blocking::Layer => "LBG",
            Blocking::Node => "NBG",
            Blocking::FinerNode { .. } => "FNBG",
            Blocking::Subnetwork { .. } => "SBG",
        }
    }

    /// A lowercase name for file and folder names: `layer`, `node`, `finer-node`, `subnetwork`.
    pub fn slug(&self) -> &'static str {
        match self {
            Blocking::Layer => "layer",
            Blocking::Node => "node",
            Blocking::FinerNode { .. } => "finer-node",
            Blocking::Subnetwork { .. } => "subnetwork",
        }
    }

    /// The blocks of `layout`, in sweep order (first layer first, then by node).
    ///
    /// ```
    /// use bdl_mcmc::Blocking;
    /// use bdl_models::{Activation, Mlp, MlpSpec, Model};
    /// use bdl_tensor::SubBlocks;
    /// let mlp = Mlp::new(MlpSpec::new(&[784, 10, 10, 10, 10], Activation::Sigmoid)).unwrap();
    /// let layout = mlp.layout();
    /// assert_eq!(Blocking::Layer.blocks(layout).unwrap().len(), 4);
    /// assert_eq!(Blocking::Node.blocks(layout).unwrap().len(), 40);
    /// let finer = Blocking::FinerNode { split: vec![Some(SubBlocks::Count(10)), None, None, None] };
    /// let blocks = finer.blocks(layout).unwrap();
    /// assert_eq!(blocks.len(), 10 * 10 + 30);
    /// assert_eq!((blocks[0].layer, blocks[0].node, blocks[0].indices.len()), (0, Some(0), 79));
    /// ```
    pub fn blocks(&self, layout: &ParamLayout) -> Result<Vec<Block>> {
        let n_layers = layout.layers().len();
        if n_layers == 0 {
            return Err(
                InvalidParam::new("layout", "no layers", "at least one layer to block").into(),
            );
        }
        let node_blocks = |layer: usize, split: Option<SubBlocks>| -> Vec<Block> {
            (0..layout.n_nodes(layer))
                .flat_map(|node| {
                    let parts = match split {
                        None => vec![layout.node(layer, node)],
                        Some(split) => layout.node_sub_blocks(layer, node, split),
                    };
                    parts.into_iter().map(move |indices| Block {
                        layer,
                        node: Some(node),
                        indices,
                    })
                })
                .collect()
        };
        Ok(match self {
            Blocking::Layer => (0..n_layers)
                .map(|layer| Block {
                    layer,
                    node: None,
                    indices: layout.layer_indices(layer),
                })
                .collect(),
            Blocking::Node => (0..n_layers).flat_map(|l| node_blocks(l, None)).collect(),
            Blocking::FinerNode { split } => {
                if split.len() != n_layers {
                    return Err(InvalidParam::new(
                        "blocking.split",
                        format!("{} splits", split.len()),
                        format!("one per layer ({n_layers})"),
                    )
                    .into());
                }
                if split
                    .iter()
                    .flatten()
                    .any(|s| matches!(s, SubBlocks::Size(0) | SubBlocks::Count(0)))
                {
                    return Err(InvalidParam::new(
                        "blocking.split",
                        format!("{split:?}"),
                        "positive sub-block sizes and counts",
                    )
                    .into());
                }
                split
                    .iter()
                    .enumerate()
                    .flat_map(|(l, &s)| node_blocks(l, s))
                    .collect()
            }
            Blocking::Subnetwork { subset, within } => {
                let mut inside = vec![false; layout.len()];
                for &i in subset {
                    match inside.get_mut(i) {
                        Some(seen @ false) => *seen = true,
                        Some(true) => {
                            return Err(InvalidParam::new(
                                "blocking.subset",
                                format!("index {i} twice"),
                                "distinct indices",
                            )
                            .into());
                        }
                        None => {
                            return Err(InvalidParam::new(
                                "blocking.subset",
                                format!("index {i}"),
                                format!("below the model's {} parameters", layout.len()),
                            )
                            .into());
                        }
                    }
                }
                within
                    .blocks(layout)?
                    .into_iter()
                    .filter_map(|block| {
                        let indices: Vec<usize> =
                            block.indices.into_iter().filter(|&i| inside[i]).collect();
                        (!indices.is_empty()).then_some(Block { indices, ..block })
                    })
                    .collect()
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bdl_models::{Activation, Mlp, MlpSpec, Model};
    use proptest::prelude::*;

    fn layout(widths: &[usize]) -> ParamLayout {
        Mlp::new(MlpSpec::new(widths, Activation::Sigmoid))
            .unwrap()
            .layout()
            .clone()
    }

    proptest! {
        /// Every blocking partitions the parameters, keeps each block inside one layer (and one
        /// node, except layer blocks), and visits layers in order.
        #[test]
        fn blockings_partition_the_parameters(
            widths in proptest::collection::vec(1usize..7, 2..5),
            k in 1usize..5,
        ) {
            let layout = layout(&widths);
            let n_layers = widths.len() - 1;
            let finer = Blocking::FinerNode {
                split: (0..n_layers).map(|l| l.is_multiple_of(2).then_some(SubBlocks::Size(k))).collect(),
            };
            for blocking in [Blocking::Layer, Blocking::Node, finer] {
                let blocks = blocking.blocks(&layout).unwrap();
                let mut all: Vec<usize> = blocks.iter().flat_map(|b| b.indices.clone()).collect();
                all.sort_unstable();
                prop_assert_eq!(all, (0..layout.len()).collect::<Vec<_>>());
                prop_assert!(blocks.windows(2).all(|w| w[0].layer <= w[1].layer));
                for b in &blocks {
                    let layer = layout.layer_indices(b.layer);
                    prop_assert!(b.indices.iter().all(|i| layer.contains(i)));
                    if let Some(node) = b.node {
                        let node = layout.node(b.layer, node);
                        prop_assert!(b.indices.iter().all(|i| node.contains(i)));
                    }
                }
            }
        }
    }

    #[test]
    fn block_counts_of_the_paper_networks() {
        let mnist = layout(&[784, 10, 10, 10, 10]);
        let fine = Blocking::FinerNode {
            split: vec![Some(SubBlocks::Size(10)), None, None, None],
        };
        assert_eq!(fine.blocks(&mnist).unwrap().len(), 10 * 78 + 30);
        let deep_xor = layout(&[2, 2, 2, 2, 2, 2, 2, 1]);
        let nodes = Blocking::Node.blocks(&deep_xor).unwrap();
        assert_eq!(nodes.len(), 13);
        assert!(nodes.iter().all(|b| b.indices.len() == 3));
        // The node index counts from the first block of its layer (not modulo a width).
        let wide_after_narrow = layout(&[3, 2, 5, 1]);
        let nodes = Blocking::Node.blocks(&wide_after_narrow).unwrap();
        let layer1: Vec<Option<usize>> = nodes
            .iter()
            .filter(|b| b.layer == 1)
            .map(|b| b.node)
            .collect();
        assert_eq!(layer1, (0..5).map(Some).collect::<Vec<_>>());
    }

    /// The invalid parameter an error names.
    fn param(result: Result<Vec<Block>>) -> String {
        match result {
            Err(crate::Error::Inference(bdl_inference::Error::InvalidParam(p))) => p.param,
            Err(other) => panic!("expected an invalid parameter, got {other}"),
            Ok(_) => panic!("expected an error"),
        }
    }

    #[test]
    fn bad_splits_are_errors() {
        let l = layout(&[3, 2, 1]);
        let short = Blocking::FinerNode { split: vec![None] };
        assert_eq!(param(short.blocks(&l)), "blocking.split");
        let zero = Blocking::FinerNode {
            split: vec![Some(SubBlocks::Count(0)), None],
        };
        assert_eq!(param(zero.blocks(&l)), "blocking.split");
    }
}
